import { decideCors, parseAllowedOrigins } from './cors';

const preflight = (url: string, origin: string, requestedMethod = 'GET') => ({ method: 'OPTIONS', url, origin, requestedMethod });

describe('decideCors', () => {
  it('never allows a cross-origin call to an API-key route, whatever origins are configured', () => {
    for (const allowed of [[], ['https://app.example.com']]) {
      expect(decideCors({ method: 'GET', url: '/v1/agents', origin: 'https://app.example.com' }, allowed).headers).not.toHaveProperty(
        'access-control-allow-origin',
      );
      expect(decideCors(preflight('/v1/agents', 'https://app.example.com', 'POST'), allowed)).toEqual({ preflight: true, headers: {} });
    }
  });

  it('lets any origin load the browser client script while no origins are configured', () => {
    expect(decideCors({ method: 'GET', url: '/v1/embed/', origin: 'https://shop.example' }, []).headers).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-expose-headers': expect.stringContaining('X-RateLimit-Remaining'),
    });
  });

  it('lets pages load the ES module and the versioned builds from another origin too, but nothing beside /v1/embed', () => {
    for (const url of ['/v1/embed/parley.mjs', '/v1/embed/1.0.0-3f9a1c2e4b/parley.mjs', '/v1/embed/parley.js?x=1']) {
      expect(decideCors({ method: 'GET', url, origin: 'https://shop.example' }, []).headers).toMatchObject({ 'access-control-allow-origin': '*' });
    }
    expect(decideCors({ method: 'GET', url: '/v1/embedded', origin: 'https://shop.example' }, []).headers).toEqual({});
  });

  it('allows exactly the configured origins on browser routes, echoing the origin and varying on it', () => {
    const allowed = parseAllowedOrigins('https://app.example.com, http://localhost:3000');

    expect(decideCors({ method: 'GET', url: '/v1/embed', origin: 'http://localhost:3000' }, allowed).headers).toMatchObject({
      'access-control-allow-origin': 'http://localhost:3000',
      vary: 'Origin',
    });
    expect(decideCors({ method: 'GET', url: '/v1/embed/', origin: 'https://evil.example' }, allowed).headers).toEqual({ vary: 'Origin' });
  });

  it('answers an allowed preflight with the route’s methods and a max age, and refuses other methods', () => {
    expect(decideCors(preflight('/v1/embed/', 'https://shop.example'), [])).toEqual({
      preflight: true,
      headers: { 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET, HEAD', 'access-control-max-age': '600' },
    });
    expect(decideCors(preflight('/v1/embed/', 'https://shop.example', 'DELETE'), [])).toEqual({ preflight: true, headers: {} });
  });

  it('opens an operator console’s routes (ringing stream, claim, refresh) to other origins, with the bearer header allowed, and nothing else of calls', () => {
    for (const [url, method] of [['/v1/calls/ringing', 'GET'], ['/v1/calls/call_123/claim', 'POST'], ['/v1/realtime/tokens/refresh', 'POST']]) {
      expect(decideCors(preflight(url, 'https://console.example', method), [])).toEqual({
        preflight: true,
        headers: {
          'access-control-allow-origin': '*',
          'access-control-allow-methods': method,
          'access-control-allow-headers': 'authorization, content-type',
          'access-control-max-age': '600',
        },
      });
      expect(decideCors({ method, url, origin: 'https://console.example' }, []).headers).toMatchObject({
        'access-control-allow-origin': '*',
        'access-control-expose-headers': expect.stringContaining('X-Request-Id'),
      });
    }
    for (const [url, method] of [['/v1/calls/call_123', 'GET'], ['/v1/calls/call_123/end', 'POST'], ['/v1/realtime/tokens', 'POST'], ['/v1/calls/a/b/claim', 'POST']]) {
      expect(decideCors(preflight(url, 'https://console.example', method), [])).toEqual({ preflight: true, headers: {} });
    }
  });

  it('treats an OPTIONS request without Origin or requested method as no preflight, and a same-origin request as no CORS', () => {
    expect(decideCors({ method: 'OPTIONS', url: '/v1/embed/' }, []).preflight).toBe(false);
    expect(decideCors({ method: 'GET', url: '/v1/embed/' }, [])).toEqual({ preflight: false, headers: {} });
  });
});

describe('parseAllowedOrigins', () => {
  it('reads a comma-separated list, empty meaning none listed', () => {
    expect(parseAllowedOrigins('')).toEqual([]);
    expect(parseAllowedOrigins('https://a.example,https://b.example:8443')).toEqual(['https://a.example', 'https://b.example:8443']);
  });
});
