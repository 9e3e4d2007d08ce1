"""The framework floor: a minimal Litestar app that answers a constant, served the same way."""

from litestar import Litestar, post


@post("/v1/tokenizers/{ref:str}/count", status_code=200, sync_to_thread=False)
def count(ref: str) -> dict[str, int]:
    return {"count": 1}


app = Litestar([count])
