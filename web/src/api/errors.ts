// Every failure the API answers is `{detail, error_code, timestamp}`: one error class for them.

export class ApiError extends Error {
  readonly status: number
  readonly errorCode: string
  readonly detail: string

  constructor(status: number, detail: string, errorCode: string) {
    super(`${detail} (${errorCode})`)
    this.status = status
    this.detail = detail
    this.errorCode = errorCode
  }
}

function isErrorBody(body: unknown): body is { detail: string; error_code: string } {
  if (typeof body !== 'object' || body === null) return false
  const b = body as Record<string, unknown>
  return typeof b.detail === 'string' && typeof b.error_code === 'string'
}

/** The error body of an answer, or one naming the status when the body is not the API's. */
export function errorFrom(status: number, body: unknown): ApiError {
  if (isErrorBody(body)) return new ApiError(status, body.detail, body.error_code)
  return new ApiError(status, `The server answered ${status}`, `HTTP_${status}`)
}

export async function errorOf(response: Response): Promise<ApiError> {
  const body: unknown = await response.json().catch(() => null)
  return errorFrom(response.status, body)
}

/** What a user is shown for any thrown value: the API's detail and code when it has them. */
export function describe(error: unknown): { detail: string; errorCode: string } {
  if (error instanceof ApiError) return { detail: error.detail, errorCode: error.errorCode }
  if (error instanceof Error) return { detail: error.message, errorCode: 'NETWORK_ERROR' }
  return { detail: String(error), errorCode: 'UNKNOWN' }
}
