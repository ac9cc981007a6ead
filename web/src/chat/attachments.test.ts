import { describe, expect, it } from 'vitest'
import { ApiError } from '@/api/errors'
import type { AttachmentOut, OnProgress } from '@/files/upload'
import { createAttachments } from './attachments'

const file = (name: string, size = 3): File => new File(['x'.repeat(size)], name)

describe('createAttachments', () => {
  it('shows progress while a file uploads and sends only finished ones, once', async () => {
    let finish: (made: AttachmentOut) => void = () => {}
    let report: OnProgress = () => {}
    const list = createAttachments((_file, onProgress) => {
      report = onProgress
      return new Promise((resolve) => (finish = resolve))
    }, () => {})
    const going = list.add([file('a.txt')])
    report(0.5)
    expect(list.chips.map((c) => [c.name, c.progress, c.ref])).toEqual([['a.txt', 0.5, null]])
    expect(list.ready).toBe(false)
    finish({ blob_ref: 'r1', filename: 'a.txt', size: 3, content_type: 'text/plain' })
    await going
    expect(list.ready).toBe(true)
    expect(list.take()).toEqual([{ ref: 'r1', name: 'a.txt', size: 3 }])
    expect(list.chips).toEqual([])
    expect(list.take()).toEqual([])
  })

  it('drops a refused file and passes on the API error; remove takes a chip away', async () => {
    const errors: [string, string][] = []
    const list = createAttachments(async (f) => {
      if (f.name === 'big.bin') throw new ApiError(413, 'too large', 'PAYLOAD_TOO_LARGE')
      return { blob_ref: `ref-${f.name}`, filename: f.name, size: f.size, content_type: 'text/plain' }
    }, (name, e) => errors.push([name, (e as ApiError).errorCode]))
    await list.add([file('big.bin'), file('a.txt'), file('b.txt')])
    expect(errors).toEqual([['big.bin', 'PAYLOAD_TOO_LARGE']])
    expect(list.chips.map((c) => c.name)).toEqual(['a.txt', 'b.txt'])
    list.remove(list.chips[0]!.key)
    expect(list.take().map((a) => a.ref)).toEqual(['ref-b.txt'])
  })
})
