# One image for every signalyard role; the command picks the role (gateway, processors, operator tasks).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY signalyard signalyard
COPY gateway gateway
COPY processors processors
COPY topics topics
COPY storage storage
RUN pip install --no-cache-dir .
ENV SIGNALYARD_HOST=0.0.0.0
USER nobody
CMD ["signalyard", "--help"]
