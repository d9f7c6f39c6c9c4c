# syntax=docker/dockerfile:1

# Build stage: a static fos binary.
FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -ldflags="-s -w" -o /out/fos ./cmd/fos

# Runtime stage: no shell, no package manager, a non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/fos /fos
USER nonroot:nonroot
ENV FOS_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/fos"]
CMD ["serve"]
