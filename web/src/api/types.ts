// Names for the generated API types (src/api/*.d.ts come from ../schemas by `npm run gen`).
import type { components } from './schema'

export type Schemas = components['schemas']
export type SessionOut = Schemas['SessionOut']
export type WorkspaceOut = Schemas['WorkspaceOut']
export type MessageOut = Schemas['MessageOut']
export type ToolCallOut = Schemas['ToolCallOut']
export type Citation = Schemas['Citation']
export type HitlRequestOut = Schemas['HitlRequestOut']
export type TokenOut = Schemas['TokenOut']
export type MeOut = Schemas['MeOut']
export type WorkingMemoryOut = Schemas['WorkingMemoryOut']
export type ErrorBody = Schemas['ErrorBody']

export type { SseSchema as SsePayload } from './sse-payloads'
export type * as Sse from './sse-payloads'
export type { ServerMessage as WsServerMessage, ClientMessage as WsClientMessage } from './ws-messages'
