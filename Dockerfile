# One image for every signalyard role; the command picks the role (gateway, processors, operator tasks).
FROM python:3.11-slim
WORKDIR /app
# The whole tree but what .dockerignore leaves out (tests, benchmarks, local state): every package pyproject.toml
# installs comes with it (tests/unit/test_image.py).
COPY . .
RUN pip install --no-cache-dir .
ENV SIGNALYARD_HOST=0.0.0.0
USER nobody
CMD ["signalyard", "--help"]
