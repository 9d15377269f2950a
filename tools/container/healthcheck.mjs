// The image's HEALTHCHECK: healthy when MCP_IDENTITY_HEALTH_URL (each service's own health
// endpoint, set in compose.yaml) answers 2xx within 4 s. HTTPS is verified against the
// system CAs and NODE_EXTRA_CA_CERTS (the stack's CA). Without the variable (one-shot jobs)
// there is nothing to check.
const url = process.env.MCP_IDENTITY_HEALTH_URL;
if (url) {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(4000) });
    await response.body?.cancel();
    if (!response.ok) {
      console.error(`${url} answered ${response.status}`);
      process.exitCode = 1;
    }
  } catch (error) {
    console.error(`${url}: ${error.cause?.message ?? error.message}`);
    process.exitCode = 1;
  }
}
