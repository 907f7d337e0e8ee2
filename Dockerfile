# The image of an nbdist cluster on Kubernetes (`nbdist k8s --image ...`, docs/multihost.md):
# nbdist installed from this repository, its examples in /app/examples, a non-root user.
#   docker build -t registry.example.com/nbdist:0.1 .
# Your own training script: FROM this image, then `COPY train.py /app/` (it runs from /app).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Only what the package needs (the rest of the repository stays out: see .dockerignore).
WORKDIR /src
COPY pyproject.toml README.md ./
COPY nbdist ./nbdist
RUN pip install --no-cache-dir /src

WORKDIR /app
COPY examples ./examples

# runAsNonRoot in the manifests needs a numeric user.
RUN useradd --create-home --uid 1000 nbdist
USER 1000

# Every task serves on this port (`nbdist k8s --port`, default 2222).
EXPOSE 2222
CMD ["python", "-m", "nbdist.server", "--help"]
