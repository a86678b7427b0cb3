// The explorer reads this peer's OpenAPI document; "Try it out" calls the
// same peer. Authorize takes "Bearer <token>" as the Authorization header.
window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: "{{spec}}",
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
};
