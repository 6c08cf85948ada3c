// Requests from the quota pages to their host: quota-hub (a token from session storage) or
// JupyterHub (the hub's login cookie and its XSRF token). Every failure becomes an ApiError whose
// message is the server's own `error` (or the hub's `message`), so the page can show it as it is.

/** Where the quota-hub page keeps the admin's token: this tab only, never cookies or URLs. */
export const TOKEN_KEY = 'quota-hub-token';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export class Api {
  /** `cfg`: the page's configuration (`base`, `auth`: "token" or "hub", `xsrf` for the hub). */
  constructor(cfg) {
    this.base = cfg.base;
    this.auth = cfg.auth;
    this.xsrf = cfg.xsrf ?? null;
    /** Requests sent so far (tests and the load figures read it). */
    this.sent = 0;
  }

  get token() {
    return this.auth === 'token' ? sessionStorage.getItem(TOKEN_KEY) : null;
  }

  async call(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (this.token) headers.Authorization = `token ${this.token}`;
    if (this.xsrf) headers['X-XSRFToken'] = this.xsrf;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    this.sent += 1;
    let res;
    try {
      res = await fetch(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: 'same-origin',
        cache: 'no-store',
      });
    } catch (e) {
      throw new ApiError(0, `${method} ${path}: the server did not answer (${e.message})`);
    }
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: reported below
    }
    if (!res.ok) {
      const said = data?.error ?? data?.message ?? (text.trim().slice(0, 300) || res.statusText);
      throw new ApiError(res.status, `${said} (HTTP ${res.status} from ${method} ${path})`);
    }
    if (data === null || typeof data !== 'object') {
      throw new ApiError(res.status, `${method} ${path}: the answer is not JSON`);
    }
    return data;
  }

  get(path) {
    return this.call('GET', path);
  }

  post(path, body) {
    return this.call('POST', path, body);
  }
}

/** `.../quota/users/<name>`: the form that reaches every name, `batch` and `refresh` included. */
export const userPath = (name) => `/admin/api/quota/users/${encodeURIComponent(name)}`;

/**
 * quota-hub's token sign-in, shared by the pages (their `signin` section, `token` field, `sign-in`
 * and `sign-out` buttons): `signIn()` shows the form and calls `start` with the token stored;
 * `begin()` starts at once when a token is stored (or the hub signs in), else shows the form.
 * `error(message)` shows a problem in the page.
 */
export function tokenSignIn(cfg, api, start, error, what = 'your token') {
  const $ = (id) => document.getElementById(id);
  const signIn = () => {
    $('signin').hidden = false;
    $('token').focus();
    const go = () => {
      const t = $('token').value.trim();
      if (!t) {
        error(`API token: paste ${what} first`);
        return;
      }
      sessionStorage.setItem(TOKEN_KEY, t);
      $('token').value = '';
      $('signin').hidden = true;
      start();
    };
    $('sign-in').onclick = go;
    $('token').onkeydown = (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        go();
      }
    };
  };
  $('sign-out').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  });
  /** A refused token is forgotten and the form shown again; true when that happened. */
  const refused = (e) => {
    if (cfg.auth !== 'token' || !(e instanceof ApiError) || (e.status !== 401 && e.status !== 403)) return false;
    sessionStorage.removeItem(TOKEN_KEY);
    error(`The token was refused: ${e.message}`);
    signIn();
    return true;
  };
  const begin = () => {
    if (cfg.auth === 'token' && !api.token) signIn();
    else start();
  };
  return { signIn, refused, begin };
}
