// A real OpenID Connect provider (the npm package oidc-provider) for Lookout's sign-in
// tests, on loopback. The test harness starts it with:
//   PORT          the port to listen on (127.0.0.1)
//   REDIRECT_URI  Lookout's /auth/callback URL
//   GROUPS_FILE   optional: a JSON object login -> groups, read at every sign-in (a test
//                 changes someone's groups while they are signed in)
// Accounts: any login is accepted by the development login form; these have groups:
//   support -> ["support"], carol -> ["customer-acme"], others -> [].
// Consent is granted automatically, so a login is one form post.
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const port = Number(process.env.PORT);
const redirect = process.env.REDIRECT_URI;
if (!port || !redirect) {
  console.error('PORT and REDIRECT_URI are required');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const builtIn = { support: ['support'], carol: ['customer-acme'] };
const groupsOf = (id) => {
  const table = process.env.GROUPS_FILE
    ? JSON.parse(readFileSync(process.env.GROUPS_FILE, 'utf8'))
    : builtIn;
  return table[id] ?? [];
};

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'lookout',
    client_secret: 'lookout-test-secret',
    redirect_uris: [redirect],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'groups'],
    email: ['email'],
  },
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['lookout-test-cookie-key'] },
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, preferred_username: id, email: `${id}@example.com`, groups: groupsOf(id) };
      },
    };
  },
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid profile email');
    grant.addOIDCClaims(['preferred_username', 'groups', 'email']);
    await grant.save();
    return grant;
  },
});
provider.proxy = false;
provider.on('server_error', (ctx, err) => console.error('server_error', err));
provider.listen(port, '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
