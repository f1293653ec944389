import { createLiveView } from './liveView';
import './style.css';

/**
 * The live job view as `serveQueryableState(running, { liveView: true })` serves it at `/job`: polls `GET /v1/job`
 * each second and redraws. A token protecting the server comes in the address's fragment (`/job#token=…`), which
 * the browser never sends to the server, and goes with each request as the bearer token.
 */
const POLL_MS = 1_000;
const token = new URLSearchParams(location.hash.slice(1)).get('token');
const fatal = document.getElementById('fatal')!;
const view = createLiveView(document.getElementById('live')!);

async function poll(): Promise<void> {
  try {
    const response = await fetch(new URL('/v1/job', location.href), { headers: token ? { authorization: `Bearer ${token}` } : {} });
    if (!response.ok) throw new Error(`GET /v1/job answered ${response.status}: ${await response.text()}`);
    await view.update(await response.json());
    fatal.hidden = true;
  } catch (error) {
    // The job may have ended or be restarting: say so and keep polling.
    fatal.textContent = `cannot read the job's view: ${(error as Error).message}`;
    fatal.hidden = false;
  }
  setTimeout(() => void poll(), POLL_MS);
}

void poll();
