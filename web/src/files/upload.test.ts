import { afterEach, describe, expect, it, vi } from 'vitest'
import { ApiError } from '@/api/errors'
import { saveTokens } from '@/api/tokens'
import { uploadAttachment, uploadFile } from './upload'

/** An XMLHttpRequest that records what was sent and answers as a test says. */
class FakeXhr {
  static made: FakeXhr[] = []
  static answer: (xhr: FakeXhr) => void = () => {}
  method = ''
  url = ''
  headers: Record<string, string> = {}
  body: FormData | null = null
  status = 0
  responseText = ''
  private listeners: Record<string, (() => void)[]> = {}
  private uploadListeners: ((e: Partial<ProgressEvent>) => void)[] = []
  upload = { addEventListener: (_: string, f: (e: Partial<ProgressEvent>) => void) => this.uploadListeners.push(f) }

  constructor() {
    FakeXhr.made.push(this)
  }
  open(method: string, url: string): void {
    this.method = method
    this.url = url
  }
  setRequestHeader(name: string, value: string): void {
    this.headers[name] = value
  }
  addEventListener(name: string, f: () => void): void {
    ;(this.listeners[name] ??= []).push(f)
  }
  send(body: FormData): void {
    this.body = body
    queueMicrotask(() => FakeXhr.answer(this))
  }
  progress(loaded: number, total: number): void {
    for (const f of this.uploadListeners) f({ lengthComputable: true, loaded, total })
  }
  finish(status: number, body: unknown): void {
    this.status = status
    this.responseText = typeof body === 'string' ? body : JSON.stringify(body)
    for (const f of this.listeners.load ?? []) f()
  }
  fail(): void {
    for (const f of this.listeners.error ?? []) f()
  }
}

function install(answer: (xhr: FakeXhr) => void): void {
  FakeXhr.made = []
  FakeXhr.answer = answer
  vi.stubGlobal('XMLHttpRequest', FakeXhr)
}

afterEach(() => {
  vi.unstubAllGlobals()
  localStorage.clear()
})

const file = new File(['hello'], 'hello.txt', { type: 'text/plain' })

describe('uploadFile', () => {
  it('posts the file as multipart field `file` with the bearer header and reports progress', async () => {
    saveTokens({ access: 'A1', refresh: 'R1' })
    const made = { id: 'f1', name: 'hello.txt', size: 5 }
    install((xhr) => {
      xhr.progress(2, 5)
      xhr.progress(5, 5)
      xhr.finish(201, made)
    })
    const seen: number[] = []
    const answer = await uploadFile('w1', file, (f) => seen.push(f))
    expect(answer).toEqual(made)
    expect(seen).toEqual([0.4, 1, 1])
    const [xhr] = FakeXhr.made
    expect(xhr?.method).toBe('POST')
    expect(xhr?.url).toMatch(/\/api\/v1\/workspaces\/w1\/files$/)
    expect(xhr?.headers.Authorization).toBe('Bearer A1')
    expect((xhr?.body?.get('file') as File).name).toBe('hello.txt')
  })

  it('throws the API error body of a refused upload, as a 413', async () => {
    saveTokens({ access: 'A1', refresh: 'R1' })
    install((xhr) => xhr.finish(413, { detail: 'a file may have at most 1,000 bytes', error_code: 'PAYLOAD_TOO_LARGE', timestamp: 't' }))
    const error = await uploadFile('w1', file, () => {}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({ status: 413, detail: 'a file may have at most 1,000 bytes', errorCode: 'PAYLOAD_TOO_LARGE' })
  })

  it('names the status when the body is not the API\'s, and a network failure', async () => {
    install((xhr) => xhr.finish(502, '<html>bad gateway</html>'))
    await expect(uploadFile('w1', file, () => {})).rejects.toMatchObject({ status: 502, errorCode: 'HTTP_502' })
    install((xhr) => xhr.fail())
    await expect(uploadFile('w1', file, () => {})).rejects.toThrow('no answer')
  })
})

describe('uploadAttachment', () => {
  it("posts to the session's attachments and answers its blob ref", async () => {
    const made = { blob_ref: 'ab12', filename: 'hello.txt', size: 5, content_type: 'text/plain' }
    install((xhr) => xhr.finish(201, made))
    expect(await uploadAttachment('s1', file, () => {})).toEqual(made)
    expect(FakeXhr.made[0]?.url).toMatch(/\/api\/v1\/sessions\/s1\/attachments$/)
  })
})
