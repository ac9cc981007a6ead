// Compiled against the types openapi-typescript generates from the OpenAPI document
// (./api.d.ts, written by tests/integration/test_openapi_client.py); a mistyped or missing
// shape is a compile error, and each @ts-expect-error must meet one.
import type { components, operations, paths } from "./api";

type Json<R> = R extends { content: { "application/json": infer B } } ? B : never;
type CreateSession = operations["createSession"];
type NewSession = NonNullable<CreateSession["requestBody"]>["content"]["application/json"];
type Session = Json<CreateSession["responses"][201]>;
type ApiError = Json<CreateSession["responses"][409]>;
type Executed = Json<operations["executeTool"]["responses"][200 | 202]>;
type Download = operations["downloadArtifact"]["responses"][200]["content"]["application/octet-stream"];
type Stream = paths["/api/v1/sessions/{session_id}/stream"]["get"];
type SsePayload = components["schemas"]["SsePayload"];

export const body: NewSession = { workspace_id: "9f1c7a52-1d1e-4f5e-9a39-5a0f9f0c2b10", title: "Heat pumps" };
// @ts-expect-error: workspace_id is required
export const noWorkspace: NewSession = { title: "Heat pumps" };

export function title(session: Session): string {
  return `${session.title} (${session.status}, version ${session.version})`;
}

export function explain(error: ApiError): string {
  return `${error.error_code}: ${error.detail} at ${error.timestamp}`;
}

export function approvalNeeded(out: Executed): boolean {
  // @ts-expect-error: there is no such field
  out.approved;
  return out.action_id != null;
}

export const bytes: Download = "";
export type Resume = NonNullable<Stream["parameters"]["header"]>["Last-Event-ID"];
export type Idempotency = NonNullable<CreateSession["parameters"]["header"]>["Idempotency-Key"];

export function eventType(payload: SsePayload): string {
  return payload.type;
}
