# syntax=docker/dockerfile:1
# Build a static binary, then ship it alone on a distroless base as non-root.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/questiond ./cmd/questiond \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/questiond /usr/local/bin/questiond
# The durable store lives here; the non-root user owns it.
COPY --from=build --chown=65532:65532 /out/data /data
USER nonroot:nonroot
EXPOSE 4097
# Inside a container the daemon must listen beyond loopback to be reachable.
ENV QUESTIOND_ADDR=0.0.0.0:4097 \
    QUESTIOND_DATA_DIR=/data
VOLUME ["/data"]
ENTRYPOINT ["/usr/local/bin/questiond"]
# No shell or curl here: the binary probes itself (GET /global/health on the
# address QUESTIOND_ADDR names; configure the container with environment
# variables rather than flags, so the probe sees the same settings).
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/questiond", "health"]
