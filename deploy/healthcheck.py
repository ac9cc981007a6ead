"""The image's health check: exit 0 when this container's API answers `/readiness` with 200.

`/readiness` is 200 when Postgres and NATS answer and the read models keep up, 503
otherwise (the body says what is not ready). Only the HTTP roles (`serve`, `api`) have
it; compose turns the check off for the others. Standard library only: it runs in the
image's venv without importing the application.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request


def main() -> int:
    port = os.environ.get("TOKENDANCE_PORT", "").strip() or "8000"
    path = sys.argv[1] if len(sys.argv) > 1 else "/readiness"
    url = f"http://127.0.0.1:{port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=4) as answer:  # noqa: S310 - our own URL
            return 0 if answer.status == 200 else 1
    except urllib.error.HTTPError as e:
        print(f"{url}: {e.code} {e.read(500).decode(errors='replace')}", file=sys.stderr)
    except OSError as e:
        print(f"{url}: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
