import { escapeHtml } from '@mcp-identity/common';

/** The login form: every authorize parameter travels back as a hidden, escaped field. */
export function loginPage(input: {
  action: string;
  params: Record<string, string>;
  csrf: string;
  clientName: string;
  /** For a Client ID Metadata Document client: the host its document came from. */
  documentHost?: string | undefined;
  /** The scopes asked for. */
  scopes: readonly string[];
  /** Where the browser is sent back to after sign-in. */
  redirectHost: string;
  error?: string;
  userName?: string;
}): string {
  const hidden = Object.entries(input.params)
    .map(
      ([name, value]) =>
        `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`,
    )
    .join('\n      ');
  const error = input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : '';
  // A document's name is the claim of whoever serves its URL: the host says who that is.
  const source = input.documentHost
    ? `<p class="muted">The application is described by <strong id="client-host">${escapeHtml(input.documentHost)}</strong>.</p>`
    : '<p class="muted">The application named itself.</p>';
  const scopes = input.scopes.length
    ? `<p>It asks for:</p>
  <ul id="scopes">${input.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code></li>`).join('')}</ul>
  <p class="muted">You get only what your role grants; if it grants none of these, the application is told so.</p>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Sign in</title>
  <style>
    body { font-family: system-ui, sans-serif; max-width: 22rem; margin: 4rem auto; padding: 0 1rem; }
    label { display: block; margin-top: 1rem; }
    input[type=text], input[type=password] { width: 100%; padding: .5rem; box-sizing: border-box; }
    button { margin-top: 1.5rem; padding: .5rem 1rem; }
    .error { color: #b00020; }
    .muted { color: #666; font-size: .85rem; }
  </style>
</head>
<body>
  <h1>Sign in</h1>
  <p><strong id="client-name">${escapeHtml(input.clientName)}</strong> wants to access your account.</p>
  ${source}
  ${scopes}
  <p>After you sign in you will be sent back to <strong id="redirect-host">${escapeHtml(input.redirectHost)}</strong>.</p>
  ${error}
  <form method="post" action="${escapeHtml(input.action)}">
      ${hidden}
      <input type="hidden" name="csrf_token" value="${escapeHtml(input.csrf)}">
    <label>Username <input type="text" name="username" autocomplete="username" required value="${escapeHtml(input.userName ?? '')}"></label>
    <label>Password <input type="password" name="password" autocomplete="current-password" required></label>
    <button type="submit">Sign in</button>
  </form>
</body>
</html>`;
}

/** A page for authorize requests that cannot be redirected back to the client. */
export function errorPage(message: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Authorization error</title></head>
<body>
  <h1>Authorization error</h1>
  <p>${escapeHtml(message)}</p>
</body>
</html>`;
}
