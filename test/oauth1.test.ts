import { describe, expect, it } from 'vitest';
import { oauth1Header, percentEncode } from '../operations/core/oauth1.ts';

const oracle = {
  consumerKey: 'ef40afdd8abaac111b13825dd5e5e2ddddb44f86d5a0dd6dcf38c20aae6b67e4',
  consumerSecret: 'd26ad321a4b2f23b0741c8d38392ce01c3e23e109df6c96eac6d099e9ab9e8b5',
  token: '2b0ce516420110bcbd36b69e99196d1b7f6de3c6234c5afb799b73d87569f5cc',
  tokenSecret: 'c29a677df7d5439a458c063654187e3d678d73aca8e3c9d8bea1478a3eb0d295',
  realm: '123456',
};

const field = (header: string, name: string) => decodeURIComponent(new RegExp(`${name}="([^"]*)"`).exec(header)![1]);

describe('OAuth 1.0a HMAC-SHA256 signer', () => {
  it("reproduces Oracle's NetSuite TBA test vector", () => {
    const header = oauth1Header(
      'GET',
      'https://123456.suitetalk.api.netsuite.com/services/rest/record/v1/employee/40',
      oracle,
      'fjaLirsIcCGVZWzBX0pg',
      '1508242306',
    );
    expect(field(header, 'oauth_signature')).toBe('B5OIWznZ2YP0OB7VrJrGkYsTh+8H+5T9Hag+o92q0zY=');
    expect(header).toMatch(/^OAuth realm="123456", /);
    expect(field(header, 'oauth_signature_method')).toBe('HMAC-SHA256');
  });

  it('signs query parameters (a RESTlet script and deploy) and changes with them', () => {
    const url = 'https://123456.restlets.api.netsuite.com/app/site/hosting/restlet.nl?script=12&deploy=1';
    const a = field(oauth1Header('POST', url, oracle, 'nonce-123456', '1508242306'), 'oauth_signature');
    const b = field(
      oauth1Header('POST', url.replace('deploy=1', 'deploy=2'), oracle, 'nonce-123456', '1508242306'),
      'oauth_signature',
    );
    expect(a).not.toBe(b);
  });

  it('uses a fresh nonce and timestamp on every call', () => {
    const url = 'https://123456.suitetalk.api.netsuite.com/services/rest/record/v1/employee/40';
    expect(field(oauth1Header('GET', url, oracle), 'oauth_nonce')).not.toBe(
      field(oauth1Header('GET', url, oracle), 'oauth_nonce'),
    );
  });

  it('percent-encodes as RFC 3986 requires', () => {
    expect(percentEncode("a b!*'()~")).toBe('a%20b%21%2A%27%28%29~');
  });
});
