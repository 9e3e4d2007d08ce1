# toksvc image: Debian bookworm-slim with Debian's Python 3.11, the package installed with its
# bundled store, verified at build time (an image with a bad store is never built).
#
#   DOCKER_BUILDKIT=0 docker build -t toksvc .
#   docker run --read-only --tmpfs /tmp -p 8000:8000 toksvc
#
# Behind a TLS-intercepting proxy, put its CA certificates (*.crt, PEM) in certs/: the build
# stage trusts them for pip; the runtime image does not carry them.

ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev gcc libc6-dev \
    ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY certs/ /tmp/certs/
RUN cat /tmp/certs/*.crt >> /etc/ssl/certs/ca-certificates.crt 2>/dev/null; true
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt
RUN python3 -m venv /opt/toksvc
COPY pyproject.toml setup.py README.md /src/
COPY service/ /src/service/
COPY tokenizers_store/ /src/tokenizers_store/
RUN /opt/toksvc/bin/pip install /src && rm -rf /src
RUN /opt/toksvc/bin/toksvc verify \
 && /opt/toksvc/bin/python -c "import service.bpe.engine.native as n; assert n.AVAILABLE, 'native engine not built'"

FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin toksvc
COPY --from=build /opt/toksvc /opt/toksvc
ENV PATH=/opt/toksvc/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    TOKSVC_HOST=0.0.0.0 TOKSVC_PORT=8000 TOKSVC_WORKERS=2 \
    TMPDIR=/tmp
USER 10001
EXPOSE 8000
# No shell at run time: the health check is Python too.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('TOKSVC_PORT', '8000'), timeout=2)"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["toksvc"]
CMD ["serve"]
