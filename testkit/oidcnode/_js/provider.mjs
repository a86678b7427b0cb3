// An OpenID provider for svc's tests: panva's oidc-provider (certified by
// the OpenID Foundation), set up as the common providers are by default:
// the ID token of a code flow carries "sub" (the rest comes from UserInfo,
// conformIdTokenClaims), PKCE is required, the client is confidential and
// authenticates at every endpoint, the device endpoint too (RFC 8628 3.1),
// and answers name their issuer (RFC 9207). Its own development login and
// consent pages stand for a person's browser: any password signs in a
// person it knows.
//
// node provider.mjs PORT, with OP_PEOPLE (JSON [{username, email, groups}])
// and OP_REDIRECTS (JSON [redirect URI]) in the environment.
import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;
const people = JSON.parse(process.env.OP_PEOPLE || '[]');
const redirects = JSON.parse(process.env.OP_REDIRECTS || '[]');

const provider = new Provider(issuer, {
  clients: [{
    client_id: process.env.OP_CLIENT_ID || 'svc',
    client_secret: process.env.OP_CLIENT_SECRET || 'svc-secret',
    application_type: 'native', // loopback redirects on any port (RFC 8252)
    redirect_uris: redirects,
    grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  features: { devInteractions: { enabled: true }, deviceFlow: { enabled: true } },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'], groups: ['groups'] },
  pkce: { required: () => true },
  cookies: { keys: ['svc-test-cookie-key'] },
  async findAccount(ctx, id) {
    const p = people.find((x) => x.username === id);
    if (!p) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: p.email, email_verified: true, preferred_username: p.username, groups: p.groups || [] };
      },
    };
  },
});
provider.listen(port, '127.0.0.1', () => console.log(`listening ${issuer}`));
