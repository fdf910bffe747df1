/** S3's own rules for names, as the service applies them. */

/** S3 bucket names: 3..63 lowercase letters, digits, '.', '-', starting and ending with a letter or digit. */
export const BUCKET_NAME_PATTERN = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
