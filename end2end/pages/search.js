// The header's search box and the search page.
export class Search {
  constructor(page) {
    this.page = page;
    this.box = page.getByRole('searchbox', { name: 'Search hosts and names' });
    this.summary = page.getByTestId('search-summary');
    this.ingresses = page.getByTestId('search-ingress');
    this.certificates = page.getByTestId('search-certificate');
  }

  async for(text) {
    await this.box.fill(text);
    await this.box.press('Enter');
  }
}
