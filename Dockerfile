FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY domain domain
COPY application application
COPY projections projections
COPY adapters adapters
COPY skills skills
COPY sandbox sandbox
COPY schemas schemas
RUN pip install --no-cache-dir .
EXPOSE 8000
CMD ["tokendance", "serve", "--host", "0.0.0.0"]
