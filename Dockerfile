# syntax=docker/dockerfile:1
# eddy: one static binary on distroless, running as nonroot with its data
# (the embedded SQLite database and the admin token) on the /data volume.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t eddy .
#   docker run -p 7070:7070 -v eddy-data:/data eddy
#
# PostgreSQL instead of SQLite: -e EDDY_DATABASE_URL=postgres://...

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# modernc.org/sqlite is pure Go: the binary needs no libc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/eddy ./cmd/eddy \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/eddy /usr/local/bin/eddy
# The volume's mount point belongs to nonroot (65532), so a fresh named
# volume is writable by the server.
COPY --from=build --chown=65532:65532 /out/data /data
USER nonroot:nonroot
VOLUME ["/data"]
EXPOSE 7070
ENTRYPOINT ["/usr/local/bin/eddy"]
CMD ["serve", "--data", "/data", "--addr", "0.0.0.0:7070"]
