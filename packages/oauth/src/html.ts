import { escapeHtml, setHtmlSecurityHeaders } from '@mcp-identity/common';
import type { FastifyReply } from 'fastify';

const STYLE = [
  'body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#222}',
  'label{display:block;margin-top:1rem}',
  'input[type=email],input[type=password]{width:100%;padding:.5rem;box-sizing:border-box}',
  'button{margin-top:1.5rem;padding:.5rem 1.5rem}',
  '.error{color:#a00;border:1px solid #a00;padding:.5rem;margin:1rem 0}',
  'code{word-break:break-all}',
  '.client{display:flex;align-items:center;gap:.75rem}',
  '.client img{width:48px;height:48px;object-fit:contain}',
  '.muted{color:#666;font-size:.85rem}',
].join('');

/** Every HTML response carries the project's security headers (CSP frame-ancestors, no referrer, no-store). */
export function sendHtml(
  reply: FastifyReply,
  status: number,
  html: string,
  security: Parameters<typeof setHtmlSecurityHeaders>[1] = {},
): FastifyReply {
  return setHtmlSecurityHeaders(reply.code(status), security).send(html);
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

export function renderErrorPage(title: string, message: string): string {
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
<p>The application that sent you here made an invalid request. You can close this page.</p>`,
  );
}

export interface LoginPageModel {
  applicationName: string;
  clientId: string;
  /** Registered by the client itself (RFC 7591): already checked to be safe to show. */
  clientName?: string;
  logoUri?: string;
  clientUri?: string;
  /** For a Client ID Metadata Document client: the host its document was fetched from. */
  documentHost?: string | undefined;
  redirectHost: string;
  /** Authorize parameters carried through the form, in order. */
  hidden: ReadonlyArray<readonly [name: string, value: string]>;
  email?: string;
  error?: string;
}

/**
 * Who asks: the registered name when there is one (the random id is only a detail then), its
 * logo and home page when registered. The name is the client's own claim, and says so.
 */
function clientIntroduction(model: LoginPageModel): string {
  const id = `<code id="client-id">${escapeHtml(model.clientId)}</code>`;
  // A document's name is the claim of whoever serves its URL: the host says who that is.
  const source =
    model.documentHost === undefined
      ? 'The application named itself'
      : `The application is described by <strong id="client-host">${escapeHtml(model.documentHost)}</strong>`;
  if (model.clientName === undefined) {
    return `<p>The client ${id} asks for access to your MCP tools (scope <code>mcp:tools</code>).</p>`;
  }
  const logo =
    model.logoUri === undefined
      ? ''
      : `<img id="client-logo" src="${escapeHtml(model.logoUri)}" alt="" referrerpolicy="no-referrer">`;
  const home =
    model.clientUri === undefined
      ? ''
      : ` (<a id="client-uri" href="${escapeHtml(model.clientUri)}" rel="noopener noreferrer" target="_blank">${escapeHtml(model.clientUri)}</a>)`;
  return `<div class="client">${logo}<p><strong id="client-name">${escapeHtml(model.clientName)}</strong>${home} asks for access to your MCP tools (scope <code>mcp:tools</code>).</p></div>
<p class="muted">${source}; client id ${id}.</p>`;
}

export function renderLoginPage(model: LoginPageModel): string {
  const hidden = model.hidden
    .map(
      ([name, value]) =>
        `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`,
    )
    .join('\n');
  const error =
    model.error === undefined
      ? ''
      : `<p class="error" role="alert" id="login-error">${escapeHtml(model.error)}</p>`;
  return page(
    `Sign in — ${model.applicationName}`,
    `<h1>Sign in to ${escapeHtml(model.applicationName)}</h1>
${clientIntroduction(model)}
<p>After you sign in you will be sent back to <strong id="redirect-host">${escapeHtml(model.redirectHost)}</strong>.</p>
${error}
<form method="post" action="authorize">
${hidden}
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(model.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
  );
}
