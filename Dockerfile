# Builds the `hearth` binary, then ships it on a slim Debian with the libraries it links.
FROM swift:6.3-bookworm AS build
WORKDIR /src
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-dev libvips-dev \
    && rm -rf /var/lib/apt/lists/*
COPY Package.swift ./
COPY Sources Sources
COPY services services
COPY Tests Tests
RUN swift build -c release --product hearth --static-swift-stdlib \
    && cp "$(swift build -c release --show-bin-path)/hearth" /usr/local/bin/hearth

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-0 libvips42 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/hearth /usr/local/bin/hearth
# Not root: a service needs only its data folder (named volumes start with this ownership).
RUN useradd --system --uid 10001 --home-dir /data hearth && mkdir -p /data && chown hearth:hearth /data
USER hearth
VOLUME /data
ENTRYPOINT ["hearth"]
