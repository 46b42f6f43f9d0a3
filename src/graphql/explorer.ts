import type { ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import type { Middleware } from 'koa';
import type { AppState } from '../http/context.js';
import { packageFile, readsPage, serveFiles } from '../http/static-files.js';
import type { GraphQLContext } from './context.js';

/** Where the local explorer lives; /graphql falls back to it when Apollo's CDN is out of reach. */
export const LOCAL_EXPLORER = '/graphiql';

/**
 * The landing page of GET /graphql (docs/operations.md): Apollo Sandbox, the explorer the user asked for,
 * which loads from Apollo's CDN; when the browser cannot load it (offline, a closed network) the
 * page moves on to the local explorer instead of saying "Apollo Sandbox cannot be loaded".
 */
export function sandboxWithFallback(): ApolloServerPlugin<GraphQLContext> {
  const sandbox = ApolloServerPluginLandingPageLocalDefault({ embed: true, includeCookies: false });
  // A failed CDN script fires an error event on its element (caught here, before Sandbox's own
  // script runs); a CDN that never answers is given a few seconds.
  const fallback = `<script>
(function () {
  var moved = false;
  function local() { if (!moved) { moved = true; location.replace(${JSON.stringify(LOCAL_EXPLORER)}); } }
  window.addEventListener('error', function (e) {
    if (e.target && e.target.tagName === 'SCRIPT' && String(e.target.src).indexOf('embeddable-sandbox') !== -1) local();
  }, true);
  setTimeout(function () { if (!window.EmbeddedSandbox) local(); }, 4000);
})();
</script>`;
  return {
    async serverWillStart(service) {
      const listener = await sandbox.serverWillStart!(service);
      if (!listener?.renderLandingPage) return listener;
      return {
        ...listener,
        async renderLandingPage() {
          const page = await listener.renderLandingPage!();
          const html = typeof page.html === 'string' ? page.html : await page.html();
          // First thing in <head>, before the CDN script is requested.
          return { html: html.replace(/<head>/i, (head) => `${head}\n${fallback}`) };
        },
      };
    },
  };
}

/**
 * GET /graphiql: GraphiQL served entirely by the service (its files come from the graphiql, react
 * and react-dom packages, read once at start), so it works without internet. An "Access token"
 * field above it, remembered by the browser, sends `Authorization: Bearer …` with every request
 * (and in a subscription's connection_init); GraphiQL's own Headers tab works too.
 */
export function localExplorer(): Middleware<AppState> {
  const js = 'text/javascript; charset=utf-8';
  const assets = serveFiles({
    [`${LOCAL_EXPLORER}/react.js`]: packageFile('react', 'umd/react.production.min.js', js),
    [`${LOCAL_EXPLORER}/react-dom.js`]: packageFile('react-dom', 'umd/react-dom.production.min.js', js),
    [`${LOCAL_EXPLORER}/graphiql.js`]: packageFile('graphiql', 'graphiql.min.js', js),
    [`${LOCAL_EXPLORER}/graphiql.css`]: packageFile('graphiql', 'graphiql.min.css', 'text/css; charset=utf-8'),
  });
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>GraphQL explorer: user and token service</title>
<link rel="stylesheet" href="${LOCAL_EXPLORER}/graphiql.css">
<style>
  html, body { height: 100%; margin: 0; font-family: system-ui, sans-serif; }
  body { display: flex; flex-direction: column; }
  #auth { display: flex; gap: .5rem; align-items: center; padding: .5rem .75rem; border-bottom: 1px solid #ddd; font-size: 14px; }
  #auth input { flex: 1; max-width: 40rem; font: inherit; padding: .25rem .5rem; }
  #graphiql { flex: 1; min-height: 0; }
</style>
</head>
<body>
<form id="auth" onsubmit="return false">
  <label for="token">Access token</label>
  <input id="token" name="token" type="password" autocomplete="off" placeholder="paste a token: it is sent as Authorization: Bearer …">
  <span id="token-state"></span>
</form>
<div id="graphiql">Loading the explorer…</div>
<script src="${LOCAL_EXPLORER}/react.js"></script>
<script src="${LOCAL_EXPLORER}/react-dom.js"></script>
<script src="${LOCAL_EXPLORER}/graphiql.js"></script>
<script>
  var input = document.getElementById('token');
  var state = document.getElementById('token-state');
  input.value = localStorage.getItem('uts-token') || '';
  function showState() { state.textContent = input.value ? 'sent with every request' : 'no token: only introspection works'; }
  input.addEventListener('input', function () { localStorage.setItem('uts-token', input.value.trim()); showState(); });
  showState();
  var endpoint = new URL('/graphql', location.href).href;
  // Subscriptions run over a WebSocket on the same path (graphql-ws); the headers, the token's
  // included, go in its connection_init payload.
  var fetcher = GraphiQL.createFetcher({ url: endpoint, subscriptionUrl: endpoint.replace(/^http/, 'ws') });
  function withToken(params, options) {
    var headers = Object.assign({}, options && options.headers);
    var token = input.value.trim();
    if (token && !Object.keys(headers).some(function (h) { return h.toLowerCase() === 'authorization'; })) headers.Authorization = 'Bearer ' + token;
    return fetcher(params, Object.assign({}, options, { headers: headers }));
  }
  var search = new URLSearchParams(location.search);
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher: withToken,
      defaultQuery: search.get('query') || '# Paste an access token above, then run:\\n{ viewer { id scope user { firstName lastName } } }\\n',
      defaultEditorToolsVisibility: 'headers',
      shouldPersistHeaders: false,
    }),
  );
</script>
</body>
</html>
`;
  return async function serveExplorer(ctx, next) {
    if (ctx.path === LOCAL_EXPLORER || ctx.path === `${LOCAL_EXPLORER}/`) {
      if (!readsPage(ctx)) return;
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = html;
      return;
    }
    await assets(ctx, next);
  };
}
