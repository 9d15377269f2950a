export { type Clock, systemClock } from '@mcp-identity/common';
