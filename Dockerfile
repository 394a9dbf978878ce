# The vigil worker image used by docker-compose.yml.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY schemas ./schemas
COPY services ./services
COPY rules ./rules
RUN pip install --no-cache-dir -e .
ENV VIGIL_WEB_HOST=0.0.0.0 \
    VIGIL_RULES_DIR=/app/rules/packs \
    VIGIL_PROMPTS_FILE=/app/rules/prompts.yaml
EXPOSE 6066
ENTRYPOINT ["vigil"]
CMD ["worker"]
