# Image for the mpi-operator-hook service (see deploy/base/deployment.yaml).
#   docker build -t <registry>/mpi-operator-hook:<version> .   (nothing is published yet: docs/releasing.md)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A fixed numeric uid/gid so Kubernetes' runAsNonRoot can verify it; matches runAsUser in the Deployment.
RUN groupadd --gid 65532 nonroot \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nonroot

# Dependencies ship as wheels (no compiler needed). The source tree is removed after installing; only
# site-packages and the `mpijob` entry point remain.
WORKDIR /src
COPY pyproject.toml README.md LICENSE NOTICE ./
COPY app ./app
RUN pip install --no-cache-dir . \
    && cd / && rm -rf /src
WORKDIR /

USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["mpijob"]
# `mpijob serve` runs uvicorn with the production settings of app/cli/program.py:server_options (uvloop, httptools,
# connection and keep-alive limits; README "Operations"); bench/http_bench.py measures with the same ones.
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
