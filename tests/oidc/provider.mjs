// An OpenID Provider for the console's sign-in tests, built on the `oidc-provider` package.
//
// It listens on a free loopback port at once and prints `listening on <issuer>`; requests get 503 until
// it is configured. Configuration comes as JSON lines on stdin; each is answered by `ready` on stdout:
//   {"clients": [{"client_id", "client_secret", "redirect_uris": [...]}], "accounts": {...}}
//   {"accounts": {"<login>": {"preferred_username", "email", "groups": [...]}}}   (later: add or replace;
//                                                                                 null removes one)
//   {"assertion_clients": {"<authorization server issuer>": "<client id there>"}}   (later: add or replace)
// The first line with `clients` creates the provider; later lines only change accounts and assertion
// clients. People sign in on the package's development pages with their login name and any password;
// consent is pre-granted.
//
// Enterprise-managed authorization (SEP-990): a client exchanges a person's ID token it got here for an
// identity assertion grant (ID-JAG, RFC 8693 token exchange at /token), for the authorization servers
// named in `assertion_clients` (its policy: which it may reach, and as which client), signed with the
// key the provider publishes. A person no longer among the accounts gets none.
// It exits when stdin closes.

import { Console } from 'node:console';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

import { importJWK, SignJWT } from 'jose';
import Provider, { errors } from 'oidc-provider';

const SCOPES = 'openid profile email';
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
const ID_JAG_TYPE = 'urn:ietf:params:oauth:token-type:id-jag';
const ID_JAG_SECONDS = 300;
// stdout carries only the lines above; the package's notices go to stderr.
globalThis.console = new Console(process.stderr);

const accounts = new Map();
const assertionClients = new Map();
let handle = null;

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };
}

const SIGNING_KEY = signingKey();

// The token exchange: the subject must be an unexpired ID token this provider issued to the asking
// client, for a person who is still an account here; the audience one the policy names.
async function exchangeForIdJag(ctx, next) {
  const { params, client, provider } = ctx.oidc;
  if (params.subject_token_type !== ID_TOKEN_TYPE || params.requested_token_type !== ID_JAG_TYPE) {
    throw new errors.InvalidRequest('only an ID token is exchanged, and only for an ID-JAG');
  }
  let payload;
  try {
    ({ payload } = await provider.IdToken.validate(params.subject_token, client));
  } catch {
    throw new errors.InvalidGrant('the subject token is not an ID token of ours for this client');
  }
  if (payload.exp <= Math.floor(Date.now() / 1000)) throw new errors.InvalidGrant('the ID token expired');
  if (!accounts.has(payload.sub)) throw new errors.InvalidGrant('the person has no account here any more');
  const clientThere = assertionClients.get(params.audience);
  if (!clientThere || !params.resource) throw new errors.InvalidTarget('no assertion grants for this audience');
  const key = await importJWK(SIGNING_KEY, SIGNING_KEY.alg);
  const grant = await new SignJWT({
    sub: payload.sub,
    client_id: clientThere,
    resource: params.resource,
    ...(params.scope ? { scope: params.scope } : {}),
    jti: randomBytes(16).toString('hex'),
  })
    .setProtectedHeader({ alg: SIGNING_KEY.alg, kid: SIGNING_KEY.kid, typ: 'oauth-id-jag+jwt' })
    .setIssuer(provider.issuer)
    .setAudience(params.audience)
    .setIssuedAt()
    .setExpirationTime(`${ID_JAG_SECONDS}s`)
    .sign(key);
  ctx.body = {
    access_token: grant,
    issued_token_type: ID_JAG_TYPE,
    token_type: 'N_A',
    expires_in: ID_JAG_SECONDS,
  };
  await next();
}

function makeProvider(issuer, clients) {
  const provider = new Provider(issuer, {
    clients: clients.map((client) => ({
      response_types: ['code'],
      grant_types: ['authorization_code', TOKEN_EXCHANGE],
      token_endpoint_auth_method: 'client_secret_basic',
      require_auth_time: true,
      ...client,
    })),
    jwks: { keys: [SIGNING_KEY] },
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
  provider.registerGrantType(
    TOKEN_EXCHANGE,
    exchangeForIdJag,
    ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope'],
  );
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
    for (const [login, claims] of Object.entries(message.accounts ?? {})) {
      if (claims === null) accounts.delete(login);
      else accounts.set(login, claims);
    }
    for (const [audience, clientId] of Object.entries(message.assertion_clients ?? {})) {
      assertionClients.set(audience, clientId);
    }
    if (message.clients && handle === null) handle = makeProvider(issuer, message.clients).callback();
    process.stdout.write('ready\n');
  });
});

process.stdin.on('end', () => server.close(() => process.exit(0)));
