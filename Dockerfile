# The vigil image used by docker-compose.yml (workers and the CLI).
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# jemalloc instead of glibc's malloc: a worker's resident set stays flat over a long run where
# glibc's arenas keep growing (BENCHMARKS.md section 10; docs/streaming.md, "The C heap").
RUN apt-get update \
    && apt-get install -y --no-install-recommends libjemalloc2 \
    && rm -rf /var/lib/apt/lists/*
ENV LD_PRELOAD=libjemalloc.so.2
WORKDIR /app
COPY pyproject.toml README.md ./
COPY schemas ./schemas
COPY services ./services
COPY rules ./rules
# Editable: the default rule, fact and extractor folders are found next to the code (/app/rules).
RUN pip install -e . \
    && useradd --system --uid 10001 --home-dir /var/lib/vigil --create-home vigil
USER vigil
ENV VIGIL_WEB_HOST=0.0.0.0 \
    VIGIL_DATA_DIR=/var/lib/vigil \
    VIGIL_RULES_DIR=/app/rules/packs \
    VIGIL_PROMPTS_FILE=/app/rules/prompts.yaml
EXPOSE 6066
ENTRYPOINT ["vigil"]
CMD ["worker"]
