// GraphiQL on a browser's GET of the GraphQL endpoint: it sends its
// requests to the URL it was served from (POST, as GraphQL over HTTP
// says), with the headers of its headers editor: put your bearer token
// there. The headers stay in this page: they are not persisted.
(function () {
  var fetcher = GraphiQL.createFetcher({ url: location.pathname });
  var root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultEditorToolsVisibility: "headers",
      shouldPersistHeaders: false,
      defaultHeaders: '{\n  "Authorization": "Bearer <your token>"\n}',
      defaultQuery: "# Set your token in the headers below, then run:\nquery {\n  me {\n    userId\n    orgs {\n      nodes {\n        orgId\n        name\n        role\n      }\n    }\n  }\n}\n",
    }),
  );
})();
