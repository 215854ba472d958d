// The preview or result page of an action (`/actions/{id}`).
export class ActionPage {
  constructor(page) {
    this.page = page;
    this.banner = page.getByTestId('action-banner');
    this.summary = page.getByTestId('action-summary');
    this.steps = page.getByTestId('action-step');
    this.items = page.getByTestId('bulk-item');
    this.budget = page.getByTestId('budget-impact');
    this.confirmBudget = page.getByTestId('confirm-budget');
    this.progress = page.getByTestId('bulk-progress');
  }

  apply(action) {
    return this.page.getByTestId(`apply-${action}`);
  }

  preview(action) {
    return this.page.getByTestId(`preview-${action}`);
  }
}
