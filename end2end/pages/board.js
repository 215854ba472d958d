// The triage board.
export class Board {
  constructor(page) {
    this.page = page;
    this.summary = page.getByTestId('board-summary');
  }

  async open(query = '') {
    await this.page.goto(`/${query}`);
  }

  /// The finding row of a rule on an object (`cluster/namespace/Kind/name`).
  finding(object, rule) {
    return this.page.locator(`[data-testid="finding-row"][data-object="${object}"][data-rule="${rule}"]`);
  }

  /// Opens the object a finding is about.
  async openObjectOf(object, rule) {
    await this.finding(object, rule).getByRole('link').first().click();
  }
}
