# oncekv's container image: the server (the default, last stage) and the
# example webhook app (--target webhook), both static binaries on
# distroless/static, running as the non-root user 65532.
#
#   docker build -t oncekv .
#   docker run -d -p 127.0.0.1:6379:6379 -v oncekv-data:/data oncekv --requirepass s3cret --appendfsync always
#   docker build --target webhook -t oncekv-webhook .
#
# Arguments after the image name are redis-server style: an optional config
# file first, then --directive value pairs. ONCEKV_<DIRECTIVE> variables
# configure it too (config file < environment < flags); the image sets
# ONCEKV_BIND=0.0.0.0 and ONCEKV_DIR=/data. With no password and a
# non-loopback bind, protected mode refuses clients from other hosts and
# containers (as Redis does): set requirepass (or, on a private network
# only, protected-mode no).

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same build test.sh checks (integration/docker_test.go): static, no cgo.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/oncekv . \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/webhook ./examples/webhook \
 && mkdir -p /out/data

# The example app of docker-compose.yml (REDIS_ADDR, REDIS_PASSWORD, LISTEN_ADDR).
FROM gcr.io/distroless/static-debian12:nonroot AS webhook
COPY --from=build /out/webhook /webhook
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/webhook"]

# The server.
FROM gcr.io/distroless/static-debian12:nonroot AS oncekv
COPY --from=build /out/oncekv /oncekv
# /data belongs to the non-root user, so that a new volume mounted there
# does too.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV ONCEKV_BIND=0.0.0.0 \
    ONCEKV_DIR=/data
VOLUME /data
EXPOSE 6379
# No redis-cli in a static image: `oncekv ping` sends PING (with AUTH
# $ONCEKV_REQUIREPASS, on port $ONCEKV_PORT or 6379) and exits 0 on +PONG.
# A password given as --requirepass needs `ping --password …` instead (see
# docker-compose.yml).
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 CMD ["/oncekv", "ping"]
ENTRYPOINT ["/oncekv"]
