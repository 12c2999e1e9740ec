// The console's only way to the server: the HTTP API, with the signed-in
// token in the Authorization header. The token lives in session storage
// (gone when the tab closes) and never in a URL.

const tokenKey = "eddy.token";

export function token() {
  return sessionStorage.getItem(tokenKey) || "";
}

export function setToken(t) {
  if (t) {
    sessionStorage.setItem(tokenKey, t);
  } else {
    sessionStorage.removeItem(tokenKey);
  }
}

// ApiError is a problem answer: {"error": {"code", "message", "details"}}.
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.message || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || "";
    this.details = problem.details || {};
  }
}

// onUnauthorized is called when the API answers 401 (set by the app).
let onUnauthorized = () => {};
export function setUnauthorized(fn) {
  onUnauthorized = fn;
}

function headers(body) {
  const h = { Authorization: `Bearer ${token()}`, Accept: "application/json" };
  if (body !== undefined) {
    h["Content-Type"] = "application/json";
  }
  return h;
}

async function failure(res) {
  let problem = { code: "", message: `HTTP ${res.status}` };
  try {
    const b = await res.json();
    if (b && b.error) {
      problem = b.error;
    }
  } catch {
    // not a problem object
  }
  const err = new ApiError(res.status, problem);
  if (res.status === 401) {
    onUnauthorized(err);
  }
  return err;
}

// api calls path (under /api/v1) and returns the decoded JSON answer, or
// throws an ApiError.
export async function api(path, { method = "GET", body, signal } = {}) {
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers: headers(body),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: "no-store",
    credentials: "omit",
  });
  if (!res.ok) {
    throw await failure(res);
  }
  if (res.status === 204) {
    return null;
  }
  return res.json();
}

// watch opens an ndjson watch stream at path and calls onFrame with every
// decoded line (rows and control frames) until the stream ends or signal
// aborts. It resolves when the server ends the stream; it throws an
// ApiError when the server refuses it.
export async function watch(path, onFrame, signal) {
  const res = await fetch(`/api/v1${path}`, {
    headers: headers(),
    signal,
    cache: "no-store",
    credentials: "omit",
  });
  if (!res.ok) {
    throw await failure(res);
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      break;
    }
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) {
        onFrame(JSON.parse(line));
      }
    }
  }
}

// query builds "?a=1&b=2" from the set entries of an object (arrays are
// comma lists); "" when none is set.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0)) {
      continue;
    }
    q.set(k, Array.isArray(v) ? v.join(",") : String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

// enc encodes one path segment.
export const enc = encodeURIComponent;
