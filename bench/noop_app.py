"""The floor for bench/http_bench.py: an ASGI app that reads the whole body and answers pre-built bytes.

Served by the same uvicorn with the same options as the hook, it costs exactly what moving the bytes
costs. ``NOOP_RESPONSE_BYTES`` sets the answer's size (the hook's response size for the same request).
"""

from __future__ import annotations

import os
from typing import Any

_SIZE = max(int(os.environ.get("NOOP_RESPONSE_BYTES", "16")), 16)
_PAYLOAD = b'{"pad":"' + b"x" * (_SIZE - 11) + b'"}'
_HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(_PAYLOAD)).encode())]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (message := await receive())["type"] != "lifespan.shutdown":
            await send({"type": message["type"] + ".complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    b"".join(chunks)  # the hook joins the body too
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": _PAYLOAD})
