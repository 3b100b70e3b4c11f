// The API reference of GET /docs: Swagger UI over the contract this
// server serves (GET /openapi.yaml). Every asset comes from this server;
// nothing is fetched from anywhere else (the page's Content-Security-Policy
// says so too).
window.ui = SwaggerUIBundle({
  url: new URL("openapi.yaml", document.baseURI).href,
  dom_id: "#swagger-ui",
  deepLinking: true,
  // Swagger UI would otherwise send the spec to swagger.io's validator.
  validatorUrl: null,
  // "Try it out" calls this server, whatever host the spec's servers name.
  requestInterceptor: function (req) {
    var u = new URL(req.url, document.baseURI);
    req.url = location.origin + u.pathname + u.search;
    return req;
  },
});
