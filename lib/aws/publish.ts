/** Putting our events on the bus: each checked against its schema first, so what leaves has its shape. */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { EVENT_SOURCE, OUTGOING_EVENTS, type OutgoingEvent } from '../events.ts';
import { parseInput } from '../store/run-record.ts';

let defaultClient: EventBridgeClient | undefined;

/** One EventBridge client per container, made on first use. */
export function eventsClient(): EventBridgeClient {
  defaultClient ??= new EventBridgeClient({});
  return defaultClient;
}

export async function publish(
  events: EventBridgeClient,
  busName: string,
  event: OutgoingEvent,
): Promise<void> {
  const type = event['detail-type'];
  const checked = parseInput(OUTGOING_EVENTS[type], event, `${type} event`);
  const answer = await events.send(
    new PutEventsCommand({
      Entries: [
        {
          EventBusName: busName,
          Source: EVENT_SOURCE,
          DetailType: type,
          Detail: JSON.stringify(checked.detail),
        },
      ],
    }),
  );
  if (answer.FailedEntryCount) {
    // Thrown so that Lambda's async retry delivers the event again.
    throw new Error(`EventBridge refused ${type}: ${answer.Entries?.[0]?.ErrorCode ?? 'unknown error'}`);
  }
}
