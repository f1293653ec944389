import { createGroupView, type GroupAnswer } from './groupView';
import './style.css';

/**
 * The scale-out group's page as `serveScaleOutQueries(runner, { liveView: true })` serves it at `/group`: polls
 * `GET /v1/group` each second and redraws. A token protecting the server comes in the address's fragment
 * (`/group#token=…`), as on the live job view.
 */
const POLL_MS = 1_000;
const token = new URLSearchParams(location.hash.slice(1)).get('token');
const fatal = document.getElementById('fatal')!;
const view = createGroupView(document.getElementById('group')!);

async function poll(): Promise<void> {
  try {
    const response = await fetch(new URL('/v1/group', location.href), { headers: token ? { authorization: `Bearer ${token}` } : {} });
    if (!response.ok) throw new Error(`GET /v1/group answered ${response.status}: ${await response.text()}`);
    view.update((await response.json()) as GroupAnswer, Date.now());
    fatal.hidden = true;
  } catch (error) {
    // The member may be leaving or the server unreachable: say so and keep polling.
    fatal.textContent = `cannot read the group: ${(error as Error).message}`;
    fatal.hidden = false;
  }
  setTimeout(() => void poll(), POLL_MS);
}

void poll();
