# reaper's container image: the static binary FROM scratch, run as a non-root
# user. There is no build stage (no Go image needs pulling): scripts/image.sh
# (make image) builds the binary and puts it into the build context with the
# machine's CA certificates (for the Clever Cloud API, webhooks over HTTPS and
# ACME) and a passwd file naming the user; it is the only way the image is built,
# for make image, make cluster-docker and the tests.
#
#   docker run -d -p 8080:8080 -p 127.0.0.1:9090:9090 \
#     -v /srv/reaper/reaper.yaml:/etc/reaper/reaper.yaml:ro -v reaper-data:/data reaper:TAG
#
# The configuration listens on 0.0.0.0 (node.listen, node.admin_listen) and keeps
# its state in /data (node.data_dir: /data); see docs/deploy.md.
FROM scratch
COPY passwd group /etc/
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chown=65532:65532 data /data
COPY reaper /reaper
USER 65532:65532
# The gateway (node.listen) and the admin listener (node.admin_listen) of the
# configuration below, by their default ports.
EXPOSE 8080 9090
VOLUME /data
# reaper health asks /healthz on the configuration's admin listener (HTTPS with
# cluster.tls); a configuration mounted elsewhere needs its own --health-cmd.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/reaper", "health", "--config", "/etc/reaper/reaper.yaml"]
ENTRYPOINT ["/reaper"]
CMD ["serve", "--config", "/etc/reaper/reaper.yaml"]
