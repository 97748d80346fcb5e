import { Column, Entity, PrimaryColumn } from 'typeorm';
import { CallStatus } from './call-state';

@Entity({ name: 'calls' })
export class CallEntity {
  @PrimaryColumn({ type: 'text' }) id: string;
  @Column({ name: 'account_id', type: 'text' }) accountId: string;
  @Column({ name: 'agent_id', type: 'text' }) agentId: string;
  @Column({ type: 'text' }) direction: 'outbound' | 'inbound' | 'web';
  @Column({ name: 'to_number', type: 'text' }) to: string;
  @Column({ name: 'from_number', type: 'text' }) from: string;
  @Column({ type: 'text' }) status: CallStatus;
  @Column({ name: 'end_reason', type: 'text', nullable: true }) endReason: string | null;
  @Column({ name: 'failure_reason', type: 'text', nullable: true }) failureReason: string | null;
  @Column({ type: 'text', nullable: true }) carrier: string | null;
  @Column({ name: 'carrier_call_id', type: 'text', nullable: true }) carrierCallId: string | null;
  @Column({ type: 'jsonb' }) variables: Record<string, string>;
  @Column({ type: 'jsonb' }) metadata: Record<string, string>;
  @Column({ type: 'int' }) turns: number;
  @Column({ name: 'recording_available', type: 'boolean' }) recordingAvailable: boolean;
  @Column({ name: 'transcript_available', type: 'boolean' }) transcriptAvailable: boolean;
  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 }) createdAt: Date;
  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 }) updatedAt: Date;
  @Column({ name: 'answered_at', type: 'timestamptz', precision: 3, nullable: true }) answeredAt: Date | null;
  @Column({ name: 'ended_at', type: 'timestamptz', precision: 3, nullable: true }) endedAt: Date | null;
}
