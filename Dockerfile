# syntax=docker/dockerfile:1
# The `volley` binary in a small image (docs/distributed.md): `volley k8s render`'s manifests
# run it as coordinator and agents. Build from the repository's root:
#   docker build -t registry.example.com/volley:0.1.0 .
# Multi-stage: the toolchain stays in the builder; the runtime image is distroless (glibc,
# libgcc, CA certificates, no shell) and runs as uid 65532, the user the manifests ask for.

ARG RUST_IMAGE=rust:1-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
# Cache mounts keep crates.io downloads and build artifacts between builds; the binary is
# copied out of the cached target dir because a cache mount is not part of the layer.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p volley \
 && install -D -m 0755 target/release/volley /out/volley

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/volley /usr/local/bin/volley
# Numeric, so `runAsNonRoot` can verify it without reading /etc/passwd.
USER 65532:65532
WORKDIR /tmp
# The coordinator's default port in the rendered manifests.
EXPOSE 6570
ENTRYPOINT ["/usr/local/bin/volley"]
CMD ["--help"]
