import { escapeHtml } from '@mcp-identity/common';

/** The login form: every authorize parameter travels back as a hidden, escaped field. */
export function loginPage(input: {
  action: string;
  params: Record<string, string>;
  csrf: string;
  clientName: string;
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
  </style>
</head>
<body>
  <h1>Sign in</h1>
  <p><strong>${escapeHtml(input.clientName)}</strong> wants to access your account.</p>
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
