/** The requests a client sends to the cluster, counted from its own events (both products' clients emit them). */
import type { SearchClient } from '../../functions/store/search-client.js';

export class RequestCounter {
  /** Every request sent so far: the client emits `request` for each one it sends, a retry included. */
  sent = 0;

  constructor(client: Pick<SearchClient, 'diagnostic'>) {
    client.diagnostic.on('request', () => {
      this.sent++;
    });
  }

  /** The requests `work` sends, when nothing else uses the client meanwhile. */
  async during(work: () => Promise<void>): Promise<number> {
    const before = this.sent;
    await work();
    return this.sent - before;
  }
}
