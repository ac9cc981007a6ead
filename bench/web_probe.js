// bench.web_speed's probe, run in the page before the app: counts the chat stream's
// `content` events as the page's fetch receives them, and keeps the growing answer's
// text at every DOM change, with the gaps between animation frames while streaming.
(() => {
  const probe = { events: 0, chars: 0, first: 0, last: 0, seen: [], frames: [], streaming: false }
  window.__probe = probe
  const real = window.fetch
  window.fetch = async (...args) => {
    const response = await real(...args)
    const url = String(args[0] instanceof Request ? args[0].url : args[0])
    if (!/\/chat\/[^/]+\/message$/.test(url) || !response.body) return response
    const [mine, theirs] = response.body.tee()
    ;(async () => {
      const reader = mine.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ''
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buffer += value.replace(/\r\n?/g, '\n')
        let cut
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          if (!/^event: content$/m.test(block)) continue
          const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n')
          probe.events += 1
          probe.chars += JSON.parse(data).content.length
          probe.last = performance.now()
          if (!probe.first) probe.first = probe.last
        }
      }
    })()
    return new Response(theirs, { status: response.status, statusText: response.statusText, headers: response.headers })
  }
  new MutationObserver(() => {
    const live = document.querySelector('article[data-role="assistant"][data-live="true"] .message-content')
    if (live) probe.seen.push(live.textContent || '')
  }).observe(document, { subtree: true, childList: true, characterData: true })
  let previous = 0
  const frame = (now) => {
    if (probe.streaming && previous) probe.frames.push(now - previous)
    previous = now
    requestAnimationFrame(frame)
  }
  requestAnimationFrame(frame)
})()
