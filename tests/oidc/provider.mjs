// A real OpenID Provider (oidc-provider, OpenID Certified) on 127.0.0.1 for the tests of the JWT path.
//
//   node provider.mjs CONFIG_JSON
//
// CONFIG_JSON: {"clients": [{"client_id", "client_secret", "department"?}], "resources": ["http://127.0.0.1:N/mcp"]}.
// It listens on a free port and prints one line, {"issuer": "http://127.0.0.1:PORT"}, once it serves: the tests
// wait for that line, never a fixed time. Access tokens come from the client_credentials grant with a resource
// indicator (RFC 8707): a JWT (RFC 9068) whose aud is that resource, signed by a key made at start and published
// at the provider's jwks_uri. A client's `department` (its own metadata) travels as a claim of its tokens, so a
// server can map callers by a claim other than sub. Every other setting is the provider's own default.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(process.argv[2] ?? '{}');
const resources = new Set(config.resources ?? []);
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys: [jwk] },
  clients: (config.clients ?? []).map((client) => ({
    ...client,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_post',
  })),
  extraClientMetadata: { properties: ['department'] },
  scopes: ['db'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (!resources.has(resource)) {
          throw new errors.InvalidTarget(`unknown resource ${resource}`);
        }
        return { scope: 'db', audience: resource, accessTokenTTL: 300, accessTokenFormat: 'jwt' };
      },
    },
  },
  extraTokenClaims: (ctx, token) => {
    const department = ctx.oidc.client?.department;
    return department ? { department } : undefined;
  },
});
provider.on('server_error', (_ctx, error) => console.error(`server_error: ${error.message}`));

server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
