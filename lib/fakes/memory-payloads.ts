import { PayloadMissingError } from '../errors';
import type { PayloadStore } from '../ports';

/** {@link PayloadStore} in memory, for tests: objects by `bucket/key`; `calls` counts each operation. */
export class MemoryPayloadStore implements PayloadStore {
  readonly objects = new Map<string, string>();
  readonly calls = { put: 0, get: 0, delete: 0 };

  async put(bucket: string, key: string, body: string, _sha256: string): Promise<void> {
    this.calls.put += 1;
    this.objects.set(`${bucket}/${key}`, body);
  }

  async get(bucket: string, key: string): Promise<string> {
    this.calls.get += 1;
    const body = this.objects.get(`${bucket}/${key}`);
    if (body === undefined) throw new PayloadMissingError(bucket, key);
    return body;
  }

  async delete(bucket: string, key: string): Promise<void> {
    this.calls.delete += 1;
    this.objects.delete(`${bucket}/${key}`);
  }
}
