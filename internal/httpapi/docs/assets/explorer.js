// GraphiQL on a browser's GET of the GraphQL endpoint: it sends its
// requests to the URL it was served from (POST, as GraphQL over HTTP
// says), with the headers of its headers editor: put your bearer token
// there. Nothing is persisted: GraphiQL keeps its tabs and history (which
// holds each query's headers, the token among them) in this page's memory,
// not in localStorage.
(function () {
  var memory = {};
  var storage = {
    getItem: function (key) {
      return Object.prototype.hasOwnProperty.call(memory, key) ? memory[key] : null;
    },
    setItem: function (key, value) {
      memory[key] = String(value);
    },
    removeItem: function (key) {
      delete memory[key];
    },
    clear: function () {
      memory = {};
    },
    get length() {
      return Object.keys(memory).length;
    },
  };
  var fetcher = GraphiQL.createFetcher({ url: location.pathname });
  var root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      storage: storage,
      defaultEditorToolsVisibility: "headers",
      shouldPersistHeaders: false,
      defaultHeaders: '{\n  "Authorization": "Bearer <your token>"\n}',
      defaultQuery: "# Set your token in the headers below, then run:\nquery {\n  me {\n    userId\n    orgs {\n      nodes {\n        orgId\n        name\n        role\n      }\n    }\n  }\n}\n",
    }),
  );
})();
