// "Ask for credit" on a user's own page: the amount, the account (their own credit or a budget
// they may charge), a reason; and their requests with the decision and its note. The server
// checks every field and says which one is wrong (one pending request per account: a 409).

const $ = (id) => document.getElementById(id);
import { credits, payer, when } from './words.js';

/** Wires the form; `me` is `/api/quota/me` (its budgets fill the account choice). */
export class CreditRequestForm {
  constructor(api, me, say, error) {
    Object.assign(this, { api, say, error });
    const account = $('ask-account');
    account.replaceChildren(new Option('Your balance', ''), ...(me.budgets ?? []).map((b) => new Option(`Budget ${b.name}`, b.name)));
    $('ask-send').addEventListener('click', () => this.send());
  }

  async send() {
    const text = $('ask-amount').value.trim();
    if (!/^\d+$/.test(text) || Number(text) < 1) {
      this.error('Credits: a whole number of credits, 1 or more', 'ask-amount');
      return;
    }
    const reason = $('ask-reason').value.trim();
    if (!reason) {
      this.error('Reason: say what the credit is for', 'ask-reason');
      return;
    }
    const budget = $('ask-account').value;
    this.say('');
    $('ask-send').disabled = true;
    try {
      const r = await this.api.post('/api/quota/me/requests', { amount: Number(text), reason, ...(budget ? { budget } : {}) });
      this.say(`Request ${r.id} sent: ${credits(r.amount)} for ${payer(r.budget)}. You will see the decision here.`);
      $('ask-amount').value = '';
      $('ask-reason').value = '';
      await this.list();
    } catch (e) {
      this.error(e.message);
    } finally {
      $('ask-send').disabled = false;
    }
  }

  async list() {
    const { requests } = await this.api.get('/api/quota/me/requests');
    const rows = [...requests].reverse();
    $('my-requests').hidden = rows.length === 0;
    $('my-requests').tBodies[0].replaceChildren(...rows.map((r) => {
      const tr = document.createElement('tr');
      const decision = r.status === 'pending' ? 'pending'
        : r.status === 'approved' ? `approved: ${r.granted} credits${r.expires_at ? `, expiring ${when(r.expires_at)}` : ''}` : 'denied';
      for (const [v, cls] of [[when(r.created_at), ''], [r.budget ? `Budget ${r.budget}` : 'Your balance', ''], [r.amount, 'num'],
        [r.reason, ''], [decision, `request-${r.status}`], [r.note ?? '', '']]) {
        const td = document.createElement('td');
        if (cls) td.className = cls;
        td.textContent = String(v);
        tr.append(td);
      }
      return tr;
    }));
    return rows.length;
  }
}
