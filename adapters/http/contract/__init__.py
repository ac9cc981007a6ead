"""The API's published contract: the OpenAPI document, its operation ids and what the
routes declare in it."""
