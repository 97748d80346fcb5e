import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

export interface LanguageEntryRecord {
  code: string;
}

@Entity({ name: 'agents' })
@Index('agents_account_listing', ['accountId', 'createdAt', 'id'])
export class AgentEntity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'account_id', type: 'text' })
  accountId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text', default: '' })
  description: string;

  @Column({ type: 'jsonb', default: [] })
  languages: LanguageEntryRecord[];

  @Column({ type: 'jsonb', default: {} })
  metadata: Record<string, string>;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  @Column({ name: 'deleted_at', type: 'timestamptz', precision: 3, nullable: true })
  deletedAt: Date | null;
}
