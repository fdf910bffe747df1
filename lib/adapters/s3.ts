import type * as S3 from '@aws-sdk/client-s3';
import { MissingDependencyError, PayloadMissingError } from '../errors';
import type { PayloadStore } from '../ports';

/** Kept out of a literal so bundlers (a tasks bundle, the publish-only package) do not pull it in. */
const S3_MODULE = ['@aws-sdk', 'client-s3'].join('/');

/**
 * `@aws-sdk/client-s3`, an optional peer: only a publisher that sends payloads over its threshold
 * loads it, when it first needs it (the dispatcher's artifact brings its own, bundled). Loaded with
 * `import()`, which both builds of the package have (the ES build has no `require` of its own), and
 * Node resolves from the package that asks, as `require` would.
 */
async function loadS3(): Promise<typeof S3> {
  try {
    const loaded = (await import(S3_MODULE)) as typeof S3 & { default?: typeof S3 };
    // A CommonJS module imported from an ES one: its exports, named or on `default`.
    return loaded.S3Client ? loaded : (loaded.default ?? loaded);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new MissingDependencyError(
      '@aws-sdk/client-s3',
      'Payloads over payloads.offloadAboveBytes are kept in S3 and need @aws-sdk/client-s3: npm install @aws-sdk/client-s3',
    );
  }
}

/** {@link PayloadStore} on Amazon S3: one PutObject, GetObject or DeleteObject per call; the client is made on first use. */
export class S3PayloadStore implements PayloadStore {
  private sdk: Promise<typeof S3> | undefined;

  /**
   * `sdk`: how a bundle that carries `@aws-sdk/client-s3` itself loads it, called on first use (so a
   * dispatcher that never sees a claim check never evaluates it).
   */
  constructor(
    /** The client, given the SDK once it is loaded (lib/aws/clients.ts makes it on first use). */
    private readonly client: (sdk: typeof S3) => S3.S3Client,
    private readonly sdkLoader?: () => typeof S3,
  ) {}

  async put(bucket: string, key: string, body: string, sha256: string): Promise<void> {
    const sdk = await this.load();
    await this.client(sdk).send(
      new sdk.PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: body,
        ContentType: 'application/json',
        ChecksumSHA256: Buffer.from(sha256, 'hex').toString('base64'),
      }),
    );
  }

  async get(bucket: string, key: string): Promise<string> {
    const sdk = await this.load();
    try {
      const out = await this.client(sdk).send(new sdk.GetObjectCommand({ Bucket: bucket, Key: key }));
      return (await out.Body?.transformToString('utf8')) ?? '';
    } catch (error) {
      if ((error as { name?: unknown }).name === 'NoSuchKey') throw new PayloadMissingError(bucket, key, { cause: error });
      throw error;
    }
  }

  async delete(bucket: string, key: string): Promise<void> {
    const sdk = await this.load();
    await this.client(sdk).send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: key }));
  }

  private load(): Promise<typeof S3> {
    // A failed load is not kept: the next call tries again (and says again what is missing).
    this.sdk ??= (this.sdkLoader ? Promise.resolve(this.sdkLoader()) : loadS3()).catch((error: unknown) => {
      this.sdk = undefined;
      throw error;
    });
    return this.sdk;
  }
}
