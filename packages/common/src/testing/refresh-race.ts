import { expect } from 'vitest';

type Tokens = { refresh_token: string };

/**
 * One refresh token sent to every token endpoint of `endpoints` at once (the same URL twice for
 * a race on one instance). Returns the winners' token responses and the losers' errors.
 */
async function refreshRace(
  endpoints: readonly string[],
  refreshToken: string,
  clientId: string,
): Promise<{ won: Tokens[]; lost: string[] }> {
  const responses = await Promise.all(
    endpoints.map((endpoint) =>
      fetch(endpoint, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: refreshToken,
          client_id: clientId,
        }),
      }),
    ),
  );
  const won: Tokens[] = [];
  const lost: string[] = [];
  for (const response of responses) {
    const body = (await response.json()) as Tokens & { error?: string };
    if (response.status === 200) won.push(body);
    else lost.push(`${response.status} ${body.error}`);
  }
  return { won, lost };
}

/**
 * `races` refresh races in a chain, each on the previous winner's token: every race must have
 * exactly one winner and its losers refused with `400 invalid_grant`, and the winner's new token
 * must stay valid (the next race uses it). Returns the first token and the last winner's.
 */
export async function refreshRaceChain(
  endpoints: readonly string[],
  tokens: { refreshToken: string; clientId: string },
  races = 20,
): Promise<{ first: string; last: string }> {
  let current = tokens.refreshToken;
  for (let race = 0; race < races; race += 1) {
    const { won, lost } = await refreshRace(endpoints, current, tokens.clientId);
    expect({ race, winners: won.length, lost }).toEqual({
      race,
      winners: 1,
      lost: endpoints.slice(1).map(() => '400 invalid_grant'),
    });
    current = (won[0] as Tokens).refresh_token;
  }
  return { first: tokens.refreshToken, last: current };
}
