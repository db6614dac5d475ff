// An OpenID Provider for the console's sign-in tests, built on the `oidc-provider` package.
//
// It listens on a free loopback port at once and prints `listening on <issuer>`; requests get 503 until
// it is configured. Configuration comes as JSON lines on stdin; each is answered by `ready` on stdout:
//   {"clients": [{"client_id", "client_secret", "redirect_uris": [...]}], "accounts": {...}}
//   {"accounts": {"<login>": {"preferred_username", "email", "groups": [...]}}}   (later: add or replace)
// The first line with `clients` creates the provider; later lines only change accounts. People sign in
// on the package's development pages with their login name and any password; consent is pre-granted.
// It exits when stdin closes.

import { Console } from 'node:console';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

import Provider from 'oidc-provider';

const SCOPES = 'openid profile email';
// stdout carries only the lines above; the package's notices go to stderr.
globalThis.console = new Console(process.stderr);

const accounts = new Map();
let handle = null;

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };
}

function makeProvider(issuer, clients) {
  const provider = new Provider(issuer, {
    clients: clients.map((client) => ({
      response_types: ['code'],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'client_secret_basic',
      require_auth_time: true,
      ...client,
    })),
    jwks: { keys: [signingKey()] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name', 'groups'],
      email: ['email', 'email_verified'],
    },
    // The console reads people's names and teams from the ID token itself.
    conformIdTokenClaims: false,
    pkce: { methods: ['S256'], required: () => true },
    features: { devInteractions: { enabled: true } },
    async findAccount(ctx, id) {
      const claims = accounts.get(id);
      if (!claims) return undefined;
      return { accountId: id, async claims() { return { ...claims, sub: id }; } };
    },
    // First-party client: consent is taken as given for the scopes the console asks for.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope(SCOPES);
      await grant.save();
      return grant;
    },
  });
  provider.on('server_error', (ctx, error) => process.stderr.write(`server_error: ${error.stack}\n`));
  return provider;
}

const server = createServer((req, res) => {
  if (handle === null) {
    res.statusCode = 503;
    res.end('not configured yet');
    return;
  }
  handle(req, res);
});

server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  process.stdout.write(`listening on ${issuer}\n`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (!line.trim()) return;
    const message = JSON.parse(line);
    for (const [login, claims] of Object.entries(message.accounts ?? {})) accounts.set(login, claims);
    if (message.clients && handle === null) handle = makeProvider(issuer, message.clients).callback();
    process.stdout.write('ready\n');
  });
});

process.stdin.on('end', () => server.close(() => process.exit(0)));
